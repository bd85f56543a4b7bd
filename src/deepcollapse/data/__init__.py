"""deepcollapse.data"""
