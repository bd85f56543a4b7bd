"""deepcollapse.analysis"""
