"""deepcollapse.models"""
